// Package jsonl is the JSONL transport of effector.Serve: intents read from a
// file or a stream (stdin, a pipe), one intent a line, and results written
// to a file or a stream, one result a line. It needs no server: an effector
// on one host serves a file that producers append to, or a pipe.
//
// A file source reads to the end of its file and then ends: Serve returns
// nil once what it read is answered. It does not wait for more lines. To
// serve a file that keeps growing, run Serve on it again (each run opens it
// with OpenFile and resumes after the checkpoint), on a timer or when the
// file changes, as ExampleOpenFile does with two runs.
//
// A Source opened on a file with OpenFile keeps a checkpoint beside it (the
// byte offset and line number after the last line acknowledged, written
// atomically and fsynced), and Serve acknowledges a line only once its
// result is durable in the results file (a Sink fsyncs before Publish
// returns); the lines of the intents finished together move the checkpoint
// with one save (Source.AckBatch), never past a line not yet answered. So a
// restarted effector resumes after the checkpoint and delivers again only
// lines whose results may not be on disk; the dedup store answers those that
// ran with the recorded result. A result line may therefore appear twice,
// always the same result: consumers deduplicate by intent id. A Source on a plain stream (NewSource) cannot redeliver: its
// acknowledgements do nothing, and the producer must resend intents that
// have no result line when an effector dies.
//
// A line of the intents file holds the intent's JSON form (see
// intent.Intent.MarshalJSON); a line of the results file holds the result's
// (intent.Result.MarshalJSON). A line is what ends in a newline.
//
// What it refuses: a line longer than WithMaxLineBytes and a line that is no
// intent are delivered with an error, for Serve's entry dead-letter sink, and
// never stop the checkpoint; a last line without its newline is never read
// nor checkpointed past (a file source waits for its rest, then stops with a
// *TornLineError); a checkpoint that does not parse, or points past the end
// of its file (the file was replaced), stops OpenFile with an error saying
// what to do.
package jsonl
