package natsstream

// ReaderIdle is how long the server keeps a results or dead-letter
// reader's consumer that its read could not delete, for the tests.
const ReaderIdle = readerIdle
