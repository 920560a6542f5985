// Command remote-agent is an agent service whose tools come from two places:
// two Go functions of its own (lookup_customer, send_email) and three tools
// an issue tracker serves over MCP (search_issues, get_issue, create_issue),
// pinned in reviewed manifests (manifests/tracker/) like the local ones.
//
//	go run ./examples/remote-agent
//
// runs the whole story against a tracker it starts on a loopback port:
//
//  1. the pin: toolreg pin against the tracker finds the manifests already
//     pin what it serves;
//  2. startup: remote.Connect checks each pinned tool, and the service binds
//     its Go functions and the tracker's tools into one pipeline; a search
//     runs inline, the issue and the email are staged with Act and executed
//     once by the effector, create_issue with the intent id as its
//     idempotency key;
//  3. the tracker's next release changes what it serves (a description with
//     an instruction in it, a larger limit): startup refuses, listing every
//     drift with the manifest's file:line, the field, and both values;
//  4. the re-pin a person would open as a pull request, and toolreg diff's
//     report of it: the description is a safety change.
//
// With -serve ADDR it only serves the tracker (release 1, or -release 2), for
// trying the CLI on it:
//
//	go run ./examples/remote-agent -serve 127.0.0.1:8088 &
//	TRACKER_URL=http://127.0.0.1:8088 go tool toolreg pin -config examples/remote-agent/mcp-servers.yaml -dir examples/remote-agent/manifests tracker
package main
