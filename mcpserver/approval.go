package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// Result _meta keys of a call to a tool whose manifest says approval:
// required.
const (
	// MetaApprovalID is the result _meta key carrying the id of the call's
	// approval: the id `toolreg approvals approve` and `deny` take, and
	// effector.Decide.
	MetaApprovalID = "toolreg/approval-id"
	// MetaApprovalState is the result _meta key carrying where the approval
	// stands: "pending", "approved", "denied" or "expired".
	MetaApprovalState = "toolreg/approval-state"
)

// ApproverClient is who a decision made through MCP elicitation is recorded
// as made by when the server knows no principal for the call (see
// WithPrincipal).
const ApproverClient = "mcp client"

// approvalInput is the key of the approval question in a multi round-trip
// result's inputRequests, and of its answer in the retry's inputResponses.
const approvalInput = "toolreg/approval"

// multiRoundTrip is the first protocol version in which a server asks its
// questions in the tool result (inputRequests, SEP-2322), and may no longer
// send elicitation/create while it serves a request.
const multiRoundTrip = "2026-07-28"

// callApproval serves a call to a tool that requires approval, which Act
// staged as in, an APPROVAL intent. The effector records it as pending;
// then the call's outcome is returned if someone already decided (a retry
// of the call), else the client's user is asked through elicitation when
// the client can be, else the result is an isError naming the pending
// approval and how a person decides it.
func (s *Server) callApproval(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest, in *intent.Intent) *mcp.CallToolResult {
	if answer, ok := req.Params.InputResponses[approvalInput]; ok {
		return s.answered(ctx, t, req, in, answer)
	}
	res, err := s.effector.Process(ctx, in)
	if err != nil {
		return s.notExecuted(ctx, t, req, in, err)
	}
	if res.Status != intent.StatusOK {
		return effectResult(in.ID, res) // refused before anyone is asked
	}
	// Decided already (by a person with `toolreg approvals`, or by an
	// earlier answer to this same call): the outcome, executing an approved
	// call if no one has yet. Past its deadline undecided: EXPIRED.
	out, err := s.effector.Resume(ctx, in.ID)
	if err == nil {
		return s.outcome(t, in.ID, out)
	}
	if !errors.Is(err, effector.ErrUndecided) {
		s.cfg.logger.ErrorContext(ctx, "mcpserver: approval", "tool", t.Name(), "approval_id", in.ID, "error", err)
		return s.pending(t, req, in, fmt.Sprintf("reading its decision failed: %v", err))
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		return s.pending(t, req, in, "this client does not declare the elicitation capability, so its user cannot be asked here")
	}
	question := s.question(t, in)
	if req.ProtocolVersion() >= multiRoundTrip {
		// The client asks its user and calls again with the answer, under a
		// state only this server can have issued for this very call.
		return &mcp.CallToolResult{
			Meta:          mcp.Meta{MetaIntentID: in.ID, MetaApprovalID: in.ID, MetaApprovalState: "pending"},
			InputRequests: mcp.InputRequestMap{approvalInput: question},
			RequestState:  s.state(in.ID, req, in),
		}
	}
	// The question waits as long as the call does: an answer after the
	// approval's deadline is refused by Decide, as EXPIRED.
	answer, err := req.Session.Elicit(ctx, question)
	if err != nil {
		s.cfg.logger.WarnContext(ctx, "mcpserver: asking for approval", "tool", t.Name(), "approval_id", in.ID, "error", err)
		return s.pending(t, req, in, fmt.Sprintf("asking this client's user failed: %v", err))
	}
	return s.decide(ctx, t, req, in, in.ID, answer)
}

// answered serves the retry of a call that carries its user's answer to
// the approval question (multi round-trip).
func (s *Server) answered(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest, in *intent.Intent, answer mcp.InputResponse) *mcp.CallToolResult {
	id, ok := s.openState(req.Params.RequestState, req, in)
	if !ok {
		return errorResult(fmt.Sprintf("%s was not executed: the answer to its approval question came with a requestState this server did not issue for this call (or issued before it restarted); call it again without inputResponses to be asked again",
			t.Name()))
	}
	er, ok := answer.(*mcp.ElicitResult)
	if !ok {
		return s.pending(t, req, in, fmt.Sprintf("the answer to its approval question is a %T, not an elicitation result", answer))
	}
	return s.decide(ctx, t, req, in, id, er)
}

// question is the elicitation that asks the client's user to approve in:
// the tool, the manifest's reason, the exact arguments that will run.
func (s *Server) question(t *toolreg.Tool, in *intent.Intent) *mcp.ElicitParams {
	var msg strings.Builder
	fmt.Fprintf(&msg, "Approve this call of %s?\n\n%s\n", t.Name(), t.Description())
	if a := t.Spec().Approval; a != nil && a.Reason != "" {
		fmt.Fprintf(&msg, "\nWhy it needs approval: %s\n", a.Reason)
	}
	var args bytes.Buffer
	if json.Indent(&args, in.ArgsJSON, "", "  ") != nil {
		args.Reset()
		args.Write(in.ArgsJSON)
	}
	fmt.Fprintf(&msg, "\nArguments, exactly as they will run:\n%s\n\nApproval %s: accept runs it once; decline runs nothing.", args.String(), in.ID)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: msg.String(),
		Meta:    mcp.Meta{MetaApprovalID: in.ID},
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"note": map[string]any{
					"type":        "string",
					"title":       "Note",
					"description": "An optional note, recorded with your decision.",
				},
			},
		},
	}
}

// decide records the user's answer on approval id and returns the outcome:
// the execution's result on acceptance, an isError result otherwise.
func (s *Server) decide(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest, in *intent.Intent, id string, answer *mcp.ElicitResult) *mcp.CallToolResult {
	d := effector.Decision{By: s.approver(req)}
	switch answer.Action {
	case "accept":
		d.Verdict = effector.Approve
		d.Note, _ = answer.Content["note"].(string)
	case "decline":
		d.Verdict, d.Note = effector.Deny, "declined by the MCP client's user"
	case "cancel":
		d.Verdict, d.Note = effector.Deny, "declined by the MCP client's user (dismissed the question)"
	default:
		return s.pending(t, req, in, fmt.Sprintf("the client answered the approval question with action %q, none of accept, decline or cancel", answer.Action))
	}
	res, err := s.effector.Decide(ctx, id, d)
	if err != nil {
		var conflict *effector.DecisionConflictError
		var expired *effector.ApprovalExpiredError
		var r *mcp.CallToolResult
		switch {
		case errors.As(err, &conflict):
			r = errorResult(fmt.Sprintf("%s: %v. Retry the same call (same idempotency key) to read its outcome.", t.Name(), err))
			r.Meta = mcp.Meta{MetaApprovalID: id, MetaApprovalState: conflict.Recorded.Verdict.String()}
		case errors.As(err, &expired):
			r = errorResult(fmt.Sprintf("%s was not executed: %v", t.Name(), err))
			r.Meta = mcp.Meta{MetaApprovalID: id, MetaApprovalState: "expired", MetaStatus: intent.StatusExpired.String()}
		default:
			s.cfg.logger.ErrorContext(ctx, "mcpserver: deciding approval", "tool", t.Name(), "approval_id", id, "error", err)
			r = errorResult(fmt.Sprintf("%s: recording or carrying out the decision on approval %s failed: %v. Retry the same call (same idempotency key) to read its outcome, or decide it with `toolreg approvals approve %s`.",
				t.Name(), id, err, id))
			r.Meta = mcp.Meta{MetaApprovalID: id}
		}
		return r
	}
	return s.outcome(t, id, res)
}

// outcome renders the result of approval id's execution: effectResult's,
// with a message saying nothing ran when the approval was denied or expired.
func (s *Server) outcome(t *toolreg.Tool, id string, res intent.Result) *mcp.CallToolResult {
	r := effectResult(intent.ExecutionID(id), res)
	state, verb := "approved", ""
	switch res.Status {
	case intent.StatusRejected:
		state, verb = "denied", "was denied"
	case intent.StatusExpired:
		state, verb = "expired", "expired with no decision"
	}
	if verb != "" {
		r.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s was not executed: approval %s %s (%s); nothing ran.", t.Name(), id, verb, res.ErrorMessage)}}
	}
	r.Meta[MetaApprovalID] = id
	r.Meta[MetaApprovalState] = state
	return r
}

// pending is the isError result of a call whose approval stays pending,
// saying why no one was asked here (why) and how a person decides.
func (s *Server) pending(t *toolreg.Tool, req *mcp.CallToolRequest, in *intent.Intent, why string) *mcp.CallToolResult {
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s was not executed: it needs a person's approval", t.Name())
	if a := t.Spec().Approval; a != nil && a.Reason != "" {
		fmt.Fprintf(&msg, " (%s)", a.Reason)
	}
	fmt.Fprintf(&msg, ", and %s. Approval %s is pending: a person must approve it with `toolreg approvals approve %s` (or deny it with `toolreg approvals deny %s`) before %s; retry this same call afterwards to get its outcome.",
		why, in.ID, in.ID, in.ID, time.UnixMilli(in.ExpiresAtMs).UTC().Format(time.RFC3339))
	if _, ok := req.Params.Meta[MetaIdempotencyKey]; !ok {
		fmt.Fprintf(&msg, " This call has no _meta %q: a retry without one is a new call, which asks for a new approval.", MetaIdempotencyKey)
	}
	r := errorResult(msg.String())
	r.Meta = mcp.Meta{MetaIntentID: in.ID, MetaApprovalID: in.ID, MetaApprovalState: "pending"}
	return r
}

// approver is who a decision made by this call's client is recorded as
// made by: its principal, if the server knows one.
func (s *Server) approver(req *mcp.CallToolRequest) string {
	if p := s.subject(req); p != "" {
		return p
	}
	return ApproverClient
}

func newStateKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// stateMAC binds a requestState to the approval id, the caller and the
// exact call, under the server's key: a client cannot forge one to decide
// another approval, nor answer for another caller or other arguments.
func (s *Server) stateMAC(id string, req *mcp.CallToolRequest, in *intent.Intent) []byte {
	m := hmac.New(sha256.New, s.stateKey)
	var n [8]byte
	for _, p := range []string{"toolreg approval state v1", id, s.subject(req), in.ToolName, string(in.ArgsJSON)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// state is the requestState of approval id's question.
func (s *Server) state(id string, req *mcp.CallToolRequest, in *intent.Intent) string {
	return id + "." + base64.RawURLEncoding.EncodeToString(s.stateMAC(id, req, in))
}

// openState returns the approval id of a requestState this server issued
// for this call, by this caller.
func (s *Server) openState(state string, req *mcp.CallToolRequest, in *intent.Intent) (string, bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", false
	}
	mac, err := base64.RawURLEncoding.DecodeString(state[i+1:])
	if err != nil {
		return "", false
	}
	id := state[:i]
	return id, hmac.Equal(mac, s.stateMAC(id, req, in))
}
