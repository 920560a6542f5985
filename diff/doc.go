// Package diff compares two sets of tool contracts and classifies each change
// by the risk it carries for a pull request:
//
//   - Breaking: a change that can make a caller's valid call invalid or change
//     what it does: a tool removed or renamed, a param removed, a new required
//     param, a type changed, an enum value removed, a constraint tightened, a
//     default changed.
//   - Safety: side_effect flipped either way. True to false moves an effect
//     into the inline path, where a retry repeats it; false to true stops a tool
//     running inline. Neither may pass silently. So is approval: required
//     removed, and for a remote tool (pinned from an MCP server) any change of
//     a description (the tool's, a param's, a result field's: text the model
//     obeys, which came from the server) or of the server or tool it is
//     served as.
//   - Compatible: a new tool, a new optional param, a local tool's
//     description edit, a constraint loosened.
//
// It refuses nothing: it reports. Whether a report fails a build is the
// caller's choice (toolreg diff exits 1 on Breaking or Safety).
package diff
