// Package remote binds tools that MCP servers serve under the same contract
// as local ones: each is pinned in a reviewed manifest (remote: names its
// server and its name there; description, params, returns and annotations
// are the reviewed copy of what the server serves; side_effect is the
// manifest's decision), and checked against its server at startup and
// whenever the server announces a change.
//
//	servers, err := remote.LoadConfig("mcp-servers.yaml") // name -> stdio command or HTTP URL
//	set, err := remote.Connect(ctx, specs, servers)      // refuses to start on any drift
//	defer set.Close()
//	b := bindings.New(specs)
//	bindings.ReadOnly(b, "lookup_customer", lookupCustomer) // local tools as ever
//	set.Bind(b)                                             // the remote ones
//	bound, err := b.Bind()
//
// It refuses, and says why:
//   - to start when a pinned tool is missing from its server, or its
//     description, params, output schema, annotations or title differ from
//     the manifest: every drift at once (*DriftError), with the manifest's
//     file:line, the field, the pinned and the served value, and the fix
//     (re-pin with toolreg pin, review the diff, restart);
//   - to offer a tool its server serves that no manifest pins;
//   - to offer, from the moment the server announces tools/list_changed, a
//     tool until it is listed and checked again; one that drifted is
//     withdrawn for good (logged, counted in MetricWithdrawals), and a call
//     of it is refused with a *toolreg.ToolWithdrawnError that tells the
//     model to do without it;
//   - to send arguments that break the pinned params (the binder checks them
//     first), and to hand on a result that breaks the pinned returns (the
//     runner and the effector check it);
//   - to call a side-effecting remote tool anywhere but in the effector: the
//     pipeline's table holds its contract only, and its call needs the
//     intent on its context, whose id it sends as the idempotency key in
//     _meta (MetaIdempotencyKey);
//   - to read a message past WithMaxMessageBytes, or more tools than
//     WithMaxTools, from a server; to wait on one past WithConnectTimeout or
//     WithCallTimeout.
//
// A call that was sent and got no answer (the server died, the connection
// broke, the timeout passed, a gateway in front of a streamable HTTP server
// answered 502 or 504) is a *CallError; one that could not be sent (a
// streamable HTTP server whose address refuses connections) is a *CallError
// that says nothing was sent, and suspends the server's tools until it is
// reconnected and checked; for a side-effecting tool the
// effector records it as ERROR with "effect unknown", and never as done.
// A server that answers that the call failed gives a *ToolError.
//
// The schema conversion, shared by toolreg pin and the startup check, reads
// the JSON Schema subset a manifest can hold and refuses the rest (anyOf,
// $ref, a type list, an open object in an output schema, ...) with the
// reason; it never simplifies a schema silently. Pin writes the manifests
// (Pin); toolreg diff reviews a re-pin.
package remote
