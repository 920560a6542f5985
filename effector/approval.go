package effector

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toolreg "github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
)

// Approvals.
//
// Act stages a call to a tool whose manifest says approval: required as an
// APPROVAL intent. Process records it as pending: its result, OK with the
// payload {"approval":"requested", ...}, keeps the exact call (tool,
// canonical arguments, the manifest's reason, the deadline, the execution
// id) in the dedup store, and the approval sink, if any, is told. A person's
// decision is then recorded in the same store under intent.DecisionID of
// the approval's id, by a claim of that id, so the first decision wins
// whichever process makes it (RecordDecision, Effector.Decide, `toolreg
// approvals`). The approved call is executed once, like any intent, under
// intent.ExecutionID of the approval's id (Effector.Resume, Decide); a
// denial or an expiry is recorded under that id too, as REJECTED or
// EXPIRED, so the pipeline learns every approval's outcome as a result
// there. Nothing but a recorded approval of exactly that call executes a
// tool that requires approval: Process refuses a TOOL intent for it under
// any other id, or without the decision, or with other arguments.

// Verdict is what a person decided.
type Verdict int

const (
	// Approve executes the staged call, once.
	Approve Verdict = iota + 1
	// Deny records the execution as REJECTED, with the decision's note.
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Approve:
		return "approved"
	case Deny:
		return "denied"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Decision is a person's decision on an approval.
type Decision struct {
	Verdict Verdict
	// By names who decided; required.
	By string
	// At is when; the zero time means now (the effector's clock in Decide).
	At time.Time
	// Note is shown with the outcome: a denial's result carries it.
	Note string
}

// ApprovalState is where an approval stands.
type ApprovalState int

const (
	// ApprovalPending: no one has decided yet.
	ApprovalPending ApprovalState = iota + 1
	// ApprovalApproved: approved; the call runs (or ran) once.
	ApprovalApproved
	// ApprovalDenied: denied; its execution is REJECTED.
	ApprovalDenied
	// ApprovalExpired: no decision came before its deadline; its execution
	// is EXPIRED.
	ApprovalExpired
)

func (s ApprovalState) String() string {
	switch s {
	case ApprovalPending:
		return "pending"
	case ApprovalApproved:
		return "approved"
	case ApprovalDenied:
		return "denied"
	case ApprovalExpired:
		return "expired"
	}
	return "invalid"
}

// Approval is an approval as its store records it.
type Approval struct {
	ID          string // the APPROVAL intent's id
	ExecutionID string // intent.ExecutionID(ID): where the call's outcome is recorded
	Tool        string
	// Arguments are the staged call's, canonical JSON, exactly as approved.
	Arguments   json.RawMessage
	Reason      string // the manifest's approval_reason
	EntityKey   []byte
	Seq         int64
	Step        uint32
	RequestedAt time.Time // when Act staged it
	ExpiresAt   time.Time // the decision's deadline
	State       ApprovalState
	// Decision is the recorded decision; nil while pending, and for an
	// approval that expired undecided.
	Decision *Decision
	// Result is the execution's recorded result (ExecutionID's), once there
	// is one.
	Result *intent.Result
	// Principal is who staged the call (intent.Intent.Principal), or nil
	// when its producer recorded none. Its execution runs with it, and is
	// refused if it lacks the tool's scopes.
	Principal *toolreg.Principal
	// AlreadyDecided is set by RecordDecision when a decision was recorded
	// before the one it was given, which then changed nothing: Decision is
	// that first one (who decided, and when). The other calls leave it
	// false.
	AlreadyDecided bool

	traceID      []byte
	signingKeyID string
	keepUntil    time.Time // the request's record is kept until then, at least (zero: unknown)
}

// ErrUnknownApproval: no approval with that id is recorded (it was never
// processed by an effector, or its record expired, or the id is another
// intent's).
var ErrUnknownApproval = errors.New("effector: unknown approval")

// errCorrupt is wrapped by the errors about a record under an approval's
// ids that is not what the effector writes there.
var errCorrupt = errors.New("the store is corrupt or shared with something else")

// ErrUndecided is Resume's refusal of an approval no one has decided yet.
var ErrUndecided = errors.New("effector: the approval is not decided yet")

// DecisionConflictError refuses a decision that contradicts the recorded
// one: approve after deny, or deny after approve. The first decision wins.
type DecisionConflictError struct {
	ApprovalID string
	Recorded   Decision
	Asked      Verdict
}

func (e *DecisionConflictError) Error() string {
	return fmt.Sprintf("effector: approval %q was already %s by %s at %s; it cannot be %s now (the first decision wins)",
		e.ApprovalID, e.Recorded.Verdict, e.Recorded.By, e.Recorded.At.UTC().Format(time.RFC3339), e.Asked)
}

// Is makes errors.Is(err, toolreg.ErrTool) hold.
func (e *DecisionConflictError) Is(target error) bool { return target == toolreg.ErrTool }

// ApprovalExpiredError refuses a decision made after the approval's
// deadline. The approval is then recorded as expired, and its execution as
// EXPIRED.
type ApprovalExpiredError struct {
	ApprovalID string
	ExpiresAt  time.Time
	At         time.Time // when the decision came
}

func (e *ApprovalExpiredError) Error() string {
	return fmt.Sprintf("effector: approval %q expired at %s, before this decision (%s late); nothing runs: the pipeline gets EXPIRED and may ask again",
		e.ApprovalID, e.ExpiresAt.UTC().Format(time.RFC3339), e.At.Sub(e.ExpiresAt).Round(time.Millisecond))
}

// Is makes errors.Is(err, toolreg.ErrTool) hold.
func (e *ApprovalExpiredError) Is(target error) bool { return target == toolreg.ErrTool }

// requestedPayload is the payload of a done APPROVAL intent. Its keys are
// in canonical (sorted) order.
type requestedPayload struct {
	Approval          string          `json:"approval"` // "requested"
	Arguments         json.RawMessage `json:"arguments"`
	CreatedAtMs       int64           `json:"created_at_ms"`
	ExecutionID       string          `json:"execution_id"`
	ExpiresAtMs       int64           `json:"expires_at_ms"`
	Principal         *principalJSON  `json:"principal,omitempty"`
	RecordExpiresAtMs int64           `json:"record_expires_at_ms,omitempty"` // until when the record is kept, at least
	Reason            string          `json:"reason,omitempty"`
	SigningKeyID      string          `json:"signing_key_id,omitempty"`
	Step              uint32          `json:"step"`
	Tool              string          `json:"tool"`
	TraceID           string          `json:"trace_id,omitempty"` // hex
}

// principalJSON is a principal in an approval's payload.
type principalJSON struct {
	Scopes  []string `json:"scopes,omitempty"`
	Subject string   `json:"subject,omitempty"`
}

func (p *principalJSON) principal() *toolreg.Principal {
	if p == nil {
		return nil
	}
	return &toolreg.Principal{Subject: p.Subject, Scopes: p.Scopes}
}

// decisionPayload is the payload of a recorded decision.
type decisionPayload struct {
	AtMs     int64  `json:"at_ms"`
	By       string `json:"by,omitempty"`
	Decision string `json:"decision"` // "approved", "denied" or "expired"
	Note     string `json:"note,omitempty"`
}

// approve is phase 4 for an APPROVAL intent: it records the call as
// pending and tells the approval sink. An approval of a tool the effect
// table holds is checked first, as its execution will be (REJECTED if the
// arguments break the contract: no one should approve a call that cannot
// run); it is pending in the store with or without a sink, since `toolreg
// approvals` and Decide read it there. An approval of anything else (the
// beam-agents "ask a person" intent) needs the sink.
func (e *Effector) approve(ctx context.Context, in *intent.Intent) (intent.Result, error) {
	t, err := e.table.Get(in.ToolName)
	known := err == nil && t.SideEffect() && t.Bound()
	if known {
		if limit := e.maxArgs(t.Name()); len(in.ArgsJSON) > limit {
			te := &toolreg.ArgumentsTooLargeError{Tool: t.Name(), Size: len(in.ArgsJSON), Limit: limit}
			return e.rejected(in, fmt.Sprintf("effector: approval %q asks for a call its execution would refuse, so no one can approve it: %v", in.ID, te)), nil
		}
		if _, err := t.DecodeArgs(in.ArgsJSON); err != nil {
			return e.rejected(in, fmt.Sprintf("effector: approval %q asks for a call that breaks its contract, so no one can approve it: %v", in.ID, err)), nil
		}
		if se := scopeErr(in, t); se != nil {
			return e.rejected(in, fmt.Sprintf("%s (effector: approval %s asks for a call its caller may not make, so no one is asked: %v)", se.ModelMessage(), in.ID, se)), nil
		}
	} else if e.cfg.approval == nil {
		return e.rejected(in, fmt.Sprintf("effector: intent %q asks for approval, and this effector has no approval sink: configure WithApproval", in.ID)), nil
	}
	p := requestedPayload{
		Approval:          "requested",
		Arguments:         in.ArgsJSON,
		CreatedAtMs:       in.CreatedAtMs,
		ExecutionID:       intent.ExecutionID(in.ID),
		ExpiresAtMs:       in.ExpiresAtMs,
		RecordExpiresAtMs: e.cfg.now().Add(e.recordTTL(ctx, in, claim{})).UnixMilli(),
		SigningKeyID:      in.SigningKeyID,
		Step:              in.StepIndex,
		Tool:              in.ToolName,
	}
	if pr := in.Principal; pr != nil {
		p.Principal = &principalJSON{Subject: pr.Subject, Scopes: pr.Scopes}
	}
	if known && t.Spec().Approval != nil {
		p.Reason = t.Spec().Approval.Reason
	}
	if len(in.TraceID) > 0 {
		p.TraceID = hex.EncodeToString(in.TraceID)
	}
	if !json.Valid(in.ArgsJSON) {
		p.Arguments = nil
	}
	payload, err := marshalCanonical(p)
	if err != nil {
		return e.rejected(in, fmt.Sprintf("effector: approval %q: %v", in.ID, err)), nil
	}
	if e.cfg.approval != nil {
		if err := e.cfg.approval(ctx, in); err != nil {
			return intent.Result{}, fmt.Errorf("effector: intent %q: approval sink: %w", in.ID, err)
		}
	}
	return e.result(in, intent.StatusOK, payload, ""), nil
}

// approvalTTL is how long an approval's records are kept: the result
// time-to-live past its deadline, so a decision can be made until the
// deadline and read long after.
func (e *Effector) approvalTTL(in *intent.Intent) time.Duration {
	life := time.Duration(in.ExpiresAtMs-in.CreatedAtMs) * time.Millisecond
	return e.cfg.resultTTL + max(life, 0)
}

// recordTTL is how long the record of in's result is kept. An approval's
// and an approval's execution's outlive their own validity, so that no
// redelivery, Resume or repeated Decide finds the id free while the intent
// may still run: the execution of an approval is valid as long as the
// approval was, which may well exceed the result time-to-live.
func (e *Effector) recordTTL(ctx context.Context, in *intent.Intent, cl claim) time.Duration {
	// Under derived ids verify marks every execution (cl.execution); under
	// producer ids only Resume's cl.resume does.
	if in.Kind != intent.KindApproval && !cl.execution && cl.resume == "" {
		return e.cfg.resultTTL
	}
	left := time.UnixMilli(in.ExpiresAtMs).Sub(e.cfg.now())
	return max(e.approvalTTL(in), e.cfg.resultTTL+max(left, 0))
}

func marshalCanonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonjson.Canonicalize(b)
}

// inspector is the store as an Inspector, which approvals need to read
// records by id.
func inspector(store DedupStore) (Inspector, error) {
	insp, ok := store.(Inspector)
	if !ok {
		return nil, fmt.Errorf("effector: approvals need a store that can read a record by id (effector.Inspector); %T cannot: use the memory, SQLite, Redis or Postgres store", store)
	}
	return insp, nil
}

// LookupApproval returns the approval id as store records it:
// ErrUnknownApproval (wrapped) if there is none.
func LookupApproval(ctx context.Context, store DedupStore, id string) (Approval, error) {
	insp, err := inspector(store)
	if err != nil {
		return Approval{}, err
	}
	rec, ok, err := insp.Record(ctx, id)
	if err != nil {
		return Approval{}, fmt.Errorf("effector: reading approval %q: %w", id, err)
	}
	if !ok || rec.State != RecordDone {
		return Approval{}, fmt.Errorf("%w: %q has no recorded approval request (it was never processed by an effector, or its record expired)", ErrUnknownApproval, id)
	}
	a, err := requested(rec)
	if err != nil {
		return Approval{}, err
	}
	return a, a.load(ctx, insp)
}

// requested decodes an approval request's record; ErrUnknownApproval if
// it is another kind of record.
func requested(rec Record) (Approval, error) {
	var res intent.Result
	if err := res.UnmarshalBinary(rec.Result); err != nil || res.Status != intent.StatusOK || !bytes.HasPrefix(res.Payload, []byte(`{"approval":"requested"`)) {
		return Approval{}, fmt.Errorf("%w: %q is another intent's record, not an approval request", ErrUnknownApproval, rec.ID)
	}
	var p requestedPayload
	if err := json.Unmarshal(res.Payload, &p); err != nil || p.Approval != "requested" || p.ExecutionID != intent.ExecutionID(rec.ID) || res.IntentID != rec.ID ||
		rec.Tool != cutTool(p.Tool) || !canonicalOf(res.Payload, p) {
		// A tool's own result that happens to start the same way: its
		// record names the tool that produced it, not the one it names.
		return Approval{}, fmt.Errorf("%w: %q is another intent's record, not an approval request", ErrUnknownApproval, rec.ID)
	}
	trace, err := hex.DecodeString(p.TraceID)
	if err != nil || hex.EncodeToString(trace) != p.TraceID {
		return Approval{}, fmt.Errorf("%w: %q is another intent's record, not an approval request", ErrUnknownApproval, rec.ID)
	}
	return Approval{
		ID: rec.ID, ExecutionID: p.ExecutionID, Tool: p.Tool, Arguments: p.Arguments, Reason: p.Reason,
		EntityKey: res.EntityKey, Seq: res.Seq, Step: p.Step,
		RequestedAt: time.UnixMilli(p.CreatedAtMs), ExpiresAt: time.UnixMilli(p.ExpiresAtMs),
		State: ApprovalPending, traceID: trace, signingKeyID: p.SigningKeyID,
		keepUntil: keepUntil(p.RecordExpiresAtMs), Principal: p.Principal.principal(),
	}, nil
}

func keepUntil(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// canonicalOf reports whether payload is exactly the canonical encoding of
// v, as the effector writes it: a record written any other way (other
// spacing, unknown or repeated keys) is not one of its records.
func canonicalOf(payload []byte, v any) bool {
	b, err := marshalCanonical(v)
	return err == nil && bytes.Equal(b, payload)
}

// load reads a's decision and execution result.
func (a *Approval) load(ctx context.Context, insp Inspector) error {
	rec, ok, err := insp.Record(ctx, intent.DecisionID(a.ID))
	if err != nil {
		return fmt.Errorf("effector: reading the decision on approval %q: %w", a.ID, err)
	}
	if ok && rec.State == RecordDone {
		if rec.Tool != cutTool(a.Tool) {
			// A result some tool recorded under the decision's id (a
			// producer's own id, WithUnderivedIDs): no decision.
			return fmt.Errorf("effector: approval %q: the record under its decision id %q is a result of tool %q, not a decision: %w", a.ID, intent.DecisionID(a.ID), rec.Tool, errCorrupt)
		}
		d, st, err := decoded(a.ID, rec.Result)
		if err != nil {
			return err
		}
		a.State, a.Decision = st, d
	}
	rec, ok, err = insp.Record(ctx, a.ExecutionID)
	if err != nil {
		return fmt.Errorf("effector: reading the execution of approval %q: %w", a.ID, err)
	}
	if ok && (rec.State == RecordDone || rec.State == RecordExpired) {
		var res intent.Result
		if err := res.UnmarshalBinary(rec.Result); err != nil {
			return fmt.Errorf("effector: approval %q: its execution's result does not decode (%v): %w", a.ID, err, errCorrupt)
		}
		a.Result = &res
	}
	return nil
}

// decoded decodes a recorded decision.
func decoded(approvalID string, b []byte) (*Decision, ApprovalState, error) {
	var res intent.Result
	var p decisionPayload
	if err := res.UnmarshalBinary(b); err != nil {
		return nil, 0, fmt.Errorf("effector: approval %q: its decision does not decode (%v): %w", approvalID, err, errCorrupt)
	}
	if err := json.Unmarshal(res.Payload, &p); err != nil {
		return nil, 0, fmt.Errorf("effector: approval %q: its decision does not decode (%v): %w", approvalID, err, errCorrupt)
	}
	d := &Decision{By: p.By, At: time.UnixMilli(p.AtMs), Note: p.Note}
	var st ApprovalState
	var want intent.Status
	switch p.Decision {
	case "approved":
		d.Verdict, st, want = Approve, ApprovalApproved, intent.StatusOK
	case "denied":
		d.Verdict, st, want = Deny, ApprovalDenied, intent.StatusRejected
	case "expired":
		st, want = ApprovalExpired, intent.StatusExpired
	default:
		return nil, 0, fmt.Errorf("effector: approval %q: its decision %q is none this version knows: upgrade it", approvalID, p.Decision)
	}
	// RecordDecision writes exactly this: its id, the status that goes
	// with the verdict, a canonical payload, a decider unless it expired.
	if res.IntentID != intent.DecisionID(approvalID) || res.Status != want || !canonicalOf(res.Payload, p) ||
		(st == ApprovalExpired) != (strings.TrimSpace(p.By) == "") || st == ApprovalExpired && p.Note != "" {
		return nil, 0, fmt.Errorf("effector: approval %q: the record under its decision id is not a decision this effector wrote (%s %s, %q): %w", approvalID, res.IntentID, res.Status, res.Payload, errCorrupt)
	}
	if st == ApprovalExpired {
		return nil, st, nil
	}
	return d, st, nil
}

// Approvals calls fn for every approval store records, pending or decided,
// in the store's record order; it stops at fn's first error. An approval
// whose decision or execution record is not one the effector wrote comes
// with State 0 ("invalid"); LookupApproval returns the error.
func Approvals(ctx context.Context, store DedupStore, fn func(Approval) error) error {
	insp, err := inspector(store)
	if err != nil {
		return err
	}
	return insp.Records(ctx, func(rec Record) error {
		if rec.State != RecordDone || !bytes.Contains(rec.Result, []byte(`{"approval":"requested"`)) {
			return nil
		}
		a, err := requested(rec)
		if errors.Is(err, ErrUnknownApproval) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := a.load(ctx, insp); errors.Is(err, errCorrupt) {
			// One unreadable record hides only its own approval:
			// LookupApproval says what is wrong with it.
			a.State, a.Decision, a.Result = 0, nil, nil
		} else if err != nil {
			return err
		}
		return fn(a)
	})
}

// decisionLease bounds a decision's claim: recording it is one Complete.
const decisionLease = 30 * time.Second

// RecordDecision records d on the approval id in store, and returns the
// approval as recorded. It does not execute anything: it is what a process
// without the tools' functions (the `toolreg approvals` CLI) can do; the
// effector executes an approved call with Resume, or Decide does both.
//
// The first decision wins: a second decision with the same verdict changes
// nothing and returns the recorded approval, with AlreadyDecided set so
// that the person can be told theirs was ignored; one with the other
// verdict is refused with a *DecisionConflictError. A decision after the approval's
// deadline is refused with an *ApprovalExpiredError, and the approval is
// recorded as expired (if no decision came first). An id with no recorded
// approval request gives ErrUnknownApproval.
func RecordDecision(ctx context.Context, store DedupStore, id string, d Decision) (Approval, error) {
	if d.Verdict != Approve && d.Verdict != Deny {
		return Approval{}, fmt.Errorf("effector: deciding approval %q: verdict %v is neither Approve nor Deny", id, d.Verdict)
	}
	if strings.TrimSpace(d.By) == "" {
		return Approval{}, fmt.Errorf("effector: deciding approval %q: say who decides (Decision.By)", id)
	}
	if d.At.IsZero() {
		d.At = time.Now()
	}
	a, err := LookupApproval(ctx, store, id)
	if err != nil {
		return Approval{}, err
	}
	late := !d.At.Before(a.ExpiresAt)
	p := decisionPayload{AtMs: d.At.UnixMilli(), By: d.By, Decision: d.Verdict.String(), Note: d.Note}
	status := intent.StatusOK
	if d.Verdict == Deny {
		status = intent.StatusRejected
	}
	if late {
		p = decisionPayload{AtMs: d.At.UnixMilli(), Decision: "expired"}
		status = intent.StatusExpired
	}
	payload, err := marshalCanonical(p)
	if err != nil {
		return Approval{}, err
	}
	did := intent.DecisionID(id)
	rec := intent.Result{IntentID: did, EntityKey: a.EntityKey, Seq: a.Seq, Status: status, Payload: payload, CompletedAtMs: d.At.UnixMilli()}
	b, err := rec.MarshalBinary()
	if err != nil {
		return Approval{}, err
	}
	call := NewCall(a.Tool, a.Arguments)
	// The decision is kept as long as the approval's request, or it would
	// read as undecided again while the request is listed.
	ttl := max(time.Until(a.ExpiresAt), a.keepUntil.Sub(d.At), 0) + DefaultResultTTL
	backoff := DefaultMinBackoff
	for {
		c, err := store.Claim(ctx, did, call, decisionLease)
		if err != nil {
			return Approval{}, fmt.Errorf("effector: recording the decision on approval %q: %w", id, err)
		}
		switch c.State {
		case Claimed:
			if err := store.Complete(ctx, did, c.Token, b, max(ttl, DefaultResultTTL)); err != nil {
				if rerr := store.Release(context.WithoutCancel(ctx), did, c.Token); rerr != nil && !errors.Is(rerr, ErrNotOwner) {
					err = errors.Join(err, rerr)
				}
				return Approval{}, fmt.Errorf("effector: recording the decision on approval %q: %w", id, err)
			}
			if late {
				a.State = ApprovalExpired
				return a, &ApprovalExpiredError{ApprovalID: id, ExpiresAt: a.ExpiresAt, At: d.At}
			}
			a.Decision = &d
			a.State = ApprovalApproved
			if d.Verdict == Deny {
				a.State = ApprovalDenied
			}
			return a, nil
		case Done:
			got, st, err := decoded(id, c.Result)
			if err != nil {
				return Approval{}, err
			}
			a.State, a.Decision, a.AlreadyDecided = st, got, true
			switch {
			case st == ApprovalExpired:
				return a, &ApprovalExpiredError{ApprovalID: id, ExpiresAt: a.ExpiresAt, At: d.At}
			case got.Verdict != d.Verdict:
				return a, &DecisionConflictError{ApprovalID: id, Recorded: *got, Asked: d.Verdict}
			}
			return a, nil // the same decision again: nothing to do
		case InFlight:
			// Another decision is being recorded: wait for it.
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return Approval{}, fmt.Errorf("effector: approval %q: gave up waiting for another decision being recorded: %w", id, context.Cause(ctx))
			case <-t.C:
			}
			backoff = min(2*backoff, DefaultMaxBackoff)
		case Mismatch:
			return Approval{}, fmt.Errorf("effector: approval %q: its decision record names %s, not the approval's %s: the store is corrupt or shared with something else", id, c.Recorded, call)
		default:
			return Approval{}, fmt.Errorf("effector: approval %q: the store answered with unknown state %d", id, int(c.State))
		}
	}
}

// Decide records d on the approval id (RecordDecision, at the effector's
// clock when d.At is zero) and carries it out (Resume): an approved call is
// executed once and its result returned; a denial returns the execution's
// REJECTED result, carrying the note. Publish the result as Process's. It
// is idempotent: deciding again the same way returns the same result and
// runs nothing again. The errors are RecordDecision's and Resume's.
func (e *Effector) Decide(ctx context.Context, id string, d Decision) (intent.Result, error) {
	if d.At.IsZero() {
		d.At = e.cfg.now()
	}
	if _, err := RecordDecision(ctx, e.store, id, d); err != nil {
		var exp *ApprovalExpiredError
		if errors.As(err, &exp) {
			// Record the EXPIRED execution, so the pipeline learns it.
			_, _ = e.Resume(ctx, id)
		}
		return intent.Result{}, err
	}
	return e.Resume(ctx, id)
}

// Resume carries out the recorded decision on the approval id: it executes
// an approved call once (a second Resume returns the recorded result), and
// records a denied or expired one's execution as REJECTED or EXPIRED. It is
// what an effector runs for a decision another process recorded (`toolreg
// approvals approve`), and after a restart: an approved call whose
// execution was cut short is executed then, once. It returns ErrUndecided
// for an approval no one decided yet, unless its deadline passed: then the
// approval is recorded as expired.
func (e *Effector) Resume(ctx context.Context, id string) (intent.Result, error) {
	a, err := LookupApproval(ctx, e.store, id)
	if err != nil {
		return intent.Result{}, err
	}
	if a.State == ApprovalPending {
		if e.cfg.now().Before(a.ExpiresAt) {
			return intent.Result{}, fmt.Errorf("%w: approval %q of %s waits for a person until %s", ErrUndecided, id, a.Tool, a.ExpiresAt.UTC().Format(time.RFC3339))
		}
		// Recording the expiry is itself a decision, so it races fairly
		// with a late one.
		a, err = RecordDecision(ctx, e.store, id, Decision{Verdict: Deny, By: "effector", At: e.cfg.now()})
		var exp *ApprovalExpiredError
		var conflict *DecisionConflictError
		// A conflict: a decision made in time was recorded first, which
		// a holds; carry it out.
		if err != nil && !errors.As(err, &exp) && !errors.As(err, &conflict) {
			return intent.Result{}, err
		}
	}
	// A late one (the effector was down) is Process's too: it claims
	// the execution even past its expiry, and gate records the denial, or
	// EXPIRED for an approved call, without running it.
	in := e.execution(a)
	return e.process(ctx, in, id)
}

// execution is the TOOL intent that carries out a's decision: a's call,
// under a's execution id, staged at the decision's time with the approval's
// time-to-live, signed with the approval's key when the effector holds it.
func (e *Effector) execution(a Approval) *intent.Intent {
	at := a.ExpiresAt
	if a.Decision != nil {
		at = a.Decision.At
	}
	life := a.ExpiresAt.Sub(a.RequestedAt)
	in := &intent.Intent{
		ID: a.ExecutionID, EntityKey: a.EntityKey, Seq: a.Seq, StepIndex: a.Step,
		ToolName: a.Tool, ArgsJSON: a.Arguments,
		CreatedAtMs: at.UnixMilli(), ExpiresAtMs: at.Add(max(life, time.Minute)).UnixMilli(),
		Kind: intent.KindTool, TraceID: a.traceID, Principal: a.Principal,
	}
	if key, ok := e.cfg.keys[a.signingKeyID]; ok && a.signingKeyID != "" {
		_ = in.SignHMAC(a.signingKeyID, key) // a key New accepted signs
	}
	return in
}

// gate is phase 4's check of a TOOL intent for a tool that requires
// approval: it runs only as the execution of a recorded approval of
// exactly this call. It returns the result to record instead of executing
// (REJECTED for a denial, EXPIRED for an expiry), or an error that refuses
// the intent unrecorded (no such approval, no decision yet, another call).
// approvalID is the approval Resume carries out, or "" for the one at in's
// position.
func (e *Effector) gate(ctx context.Context, in *intent.Intent, approvalID string) (res intent.Result, run bool, err error) {
	if approvalID == "" {
		approvalID = intent.IntentID(in.EntityKey, in.Seq, in.StepIndex)
	}
	if in.ID != intent.ExecutionID(approvalID) {
		if e.cfg.underivedIDs {
			// Under producer ids, in.ID may be the execution id of an
			// approval staged under an id of the producer's: an outcome
			// recorded there would stand for the approved call's. Only
			// Resume (and Decide) carry out an approval then.
			return intent.Result{}, false, e.refuse(ctx, in, fmt.Errorf("intent %q: tool %q requires a person's approval (approval: required), and under producer ids (WithUnderivedIDs) only Effector.Resume or Decide run an approved call; nothing ran", in.ID, in.ToolName))
		}
		return e.rejected(in, fmt.Sprintf("effector: intent %q: tool %q requires a person's approval (approval: required): stage it with runner.Activation.Act, which asks for approval, and it runs once approved; nothing ran", in.ID, in.ToolName)), false, nil
	}
	a, err := LookupApproval(ctx, e.store, approvalID)
	if errors.Is(err, ErrUnknownApproval) {
		return intent.Result{}, false, e.refuse(ctx, in, fmt.Errorf("execution %q of a tool that requires approval: %w", in.ID, err))
	}
	if err != nil {
		// The store failed, or ctx ended: not a refusal. The claim is
		// released and a redelivery (or Resume) tries again.
		return intent.Result{}, false, fmt.Errorf("effector: execution %q of a tool that requires approval: %w", in.ID, err)
	}
	if a.Tool != in.ToolName || !bytes.Equal(canonicalOrRaw(a.Arguments), canonicalOrRaw(in.ArgsJSON)) {
		return intent.Result{}, false, e.refuse(ctx, in, fmt.Errorf("execution %q asks for %s, and approval %q approved %s: only the approved call runs",
			in.ID, CallOf(in), approvalID, NewCall(a.Tool, a.Arguments)))
	}
	switch a.State {
	case ApprovalApproved:
		if now := e.cfg.now(); expired(in, now) {
			// Carried out after its window (the effector was down): it
			// does not run late; EXPIRED is recorded. The producer's
			// intent TTL has no say here, so the message names what does.
			e.cfg.logger.WarnContext(ctx, "effector: an approved call was carried out after its window; nothing ran", "intent_id", in.ID, "approval_id", approvalID, "tool", in.ToolName, "expires_at_ms", in.ExpiresAtMs)
			return e.result(in, intent.StatusExpired, nil, fmt.Sprintf("effector: approval %q was approved, and no effector carried it out before %s (now %s); nothing ran: keep an effector running ResumeDecided while approvals are pending, and the pipeline may ask again",
				approvalID, time.UnixMilli(in.ExpiresAtMs).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))), false, nil
		}
		return intent.Result{}, true, nil
	case ApprovalDenied:
		msg := fmt.Sprintf("denied by %s", a.Decision.By)
		if a.Decision.Note != "" {
			msg += ": " + a.Decision.Note
		}
		return e.rejected(in, msg), false, nil
	case ApprovalExpired:
		return e.result(in, intent.StatusExpired, nil, fmt.Sprintf("effector: approval %q expired at %s with no decision; nothing ran", approvalID, a.ExpiresAt.UTC().Format(time.RFC3339))), false, nil
	}
	return intent.Result{}, false, e.refuse(ctx, in, fmt.Errorf("execution %q: %w: approval %q waits for a person", in.ID, ErrUndecided, approvalID))
}

func canonicalOrRaw(b []byte) []byte {
	if c, err := canonjson.Canonicalize(b); err == nil {
		return c
	}
	return b
}

// ResumeDecided carries out every decision recorded in the store whose
// execution has no result yet (Resume), such as one made with `toolreg
// approvals approve` in another process, or one whose execution a crash cut
// short, and hands each outcome to publish, as Serve publishes Process's. It
// also records as expired the approvals still pending past their deadline.
// It returns how many outcomes it published. Call it at startup and then on
// a ticker; it reads the whole store (Approvals), so every minute or so, not
// in a tight loop. An error from Resume or publish is its approval's: the
// pass goes on with the others and returns the first error (and how many
// more there were); the failed ones are retried at the next pass.
//
// Such an outcome reaches the pipeline only through publish (no delivery
// of it exists for a transport to redeliver), so ResumeDecided records its
// publication in the store, under intent.PublicationID of the approval: it
// claims that id, with the effector's lease, before carrying out the
// decision, and completes it once publish succeeds. A publish that failed is
// retried at this effector's next pass; if the effector stops first, any
// effector's pass takes the publication over once its lease has run out,
// and publishes the recorded outcome without running anything again. So
// each outcome is published at least once, and twice only when a publisher
// stopped (or could not record) between publishing and recording it, or
// kept failing to publish past its lease while another took over. Two effectors' passes at
// once publish each outcome once. An outcome Decide returned is its
// caller's to publish: ResumeDecided leaves it.
func (e *Effector) ResumeDecided(ctx context.Context, publish func(context.Context, intent.Result) error) (int, error) {
	insp, err := inspector(e.store)
	if err != nil {
		return 0, err
	}
	// One pass at a time: a pass retries the publications this effector
	// holds, which another pass of its own must not publish beside it.
	e.pubs.pass.Lock()
	defer e.pubs.pass.Unlock()
	var todo []Approval
	now := e.cfg.now()
	err = Approvals(ctx, e.store, func(a Approval) error {
		if a.State == 0 {
			e.cfg.logger.ErrorContext(ctx, "effector: an approval's records are unreadable; it is not carried out: toolreg approvals show says why", "approval_id", a.ID, "tool", a.Tool)
			return nil
		}
		if a.Result != nil || a.State != ApprovalPending || !now.Before(a.ExpiresAt) {
			todo = append(todo, a)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n, failed := 0, 0
	var first error
	for _, a := range todo {
		published, err := e.publishOutcome(ctx, insp, a, publish)
		if published {
			n++
		}
		if err != nil {
			if ctx.Err() != nil {
				return n, err
			}
			// One approval's failure (a sink refusing its outcome, say)
			// must not hold up the others: go on.
			if failed++; first == nil {
				first = err
			}
		}
	}
	if failed > 1 {
		return n, fmt.Errorf("%w (and %d more approvals failed)", first, failed-1)
	}
	return n, first
}

// publishOutcome carries out a's decision unless it has been, and
// publishes its outcome, if a's publication is this effector's to make
// (see ResumeDecided): it reports whether it published.
func (e *Effector) publishOutcome(ctx context.Context, insp Inspector, a Approval, publish func(context.Context, intent.Result) error) (bool, error) {
	pid := intent.PublicationID(a.ID)
	rec, ok, err := insp.Record(ctx, pid)
	if err != nil {
		return false, fmt.Errorf("effector: reading the publication of approval %q: %w", a.ID, err)
	}
	token, mine := e.pubs.held(a.ID)
	switch {
	case ok && (rec.State == RecordDone || rec.State == RecordExpired):
		e.pubs.drop(a.ID) // published
		return false, nil
	case mine && ok && rec.State == RecordInFlight:
		// Ours: its publish failed at an earlier pass.
	case ok && rec.State == RecordInFlight:
		return false, nil // another effector is publishing it
	case !ok && a.Result != nil:
		// Carried out with no publication begun (Decide, whose caller
		// publishes; a version that kept none): not ours.
		e.pubs.drop(a.ID)
		return false, nil
	default: // none begun, or its publisher stopped (RecordUnknown)
		c, err := e.store.Claim(ctx, pid, NewCall(a.Tool, a.Arguments), e.cfg.lease)
		if err != nil {
			return false, fmt.Errorf("effector: taking the publication of approval %q: %w", a.ID, err)
		}
		switch c.State {
		case Claimed:
			token = c.Token
			e.pubs.hold(a.ID, token)
		case Done, InFlight:
			return false, nil // another effector took it first
		case Mismatch:
			return false, fmt.Errorf("effector: approval %q: its publication record names %s, not the approval's %s: the store is corrupt or shared with something else", a.ID, c.Recorded, NewCall(a.Tool, a.Arguments))
		default:
			return false, fmt.Errorf("effector: approval %q: the store answered with unknown state %d", a.ID, int(c.State))
		}
	}
	// The publication is ours until Complete: on any error below it stays
	// held, for the next pass.
	var res intent.Result
	if a.Result != nil {
		res = *a.Result
	} else if res, err = e.Resume(ctx, a.ID); err != nil {
		return false, err
	}
	if err := publish(ctx, res); err != nil {
		return false, fmt.Errorf("effector: publishing the outcome of approval %q: %w", a.ID, err)
	}
	now := e.cfg.now()
	b, err := (&intent.Result{IntentID: pid, EntityKey: a.EntityKey, Seq: a.Seq, Status: intent.StatusOK,
		Payload: json.RawMessage(`{"approval":"published"}`), CompletedAtMs: now.UnixMilli()}).MarshalBinary()
	if err != nil {
		return false, err
	}
	// Kept as long as the approval's other records, so a later pass finds it.
	ttl := max(a.ExpiresAt.Sub(now), a.keepUntil.Sub(now), 0) + max(e.cfg.resultTTL, DefaultResultTTL)
	if err := e.store.Complete(ctx, pid, token, b, ttl); err != nil && !errors.Is(err, ErrNotOwner) {
		// Published but not recorded: the next pass publishes it again.
		return true, fmt.Errorf("effector: recording the publication of approval %q: %w", a.ID, err)
	}
	// ErrNotOwner: this effector's lease ran out and another took the
	// publication over; it publishes too. Either way this one is done.
	e.pubs.drop(a.ID)
	return true, nil
}

// publications are the approval outcomes whose publication an effector
// holds (it claimed their publication records) and has not finished:
// approval id to the claim's token.
type publications struct {
	pass   sync.Mutex // held by a ResumeDecided pass
	mu     sync.Mutex
	tokens map[string]string
}

func (p *publications) held(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tokens[id]
	return t, ok
}

func (p *publications) hold(id, token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokens == nil {
		p.tokens = make(map[string]string)
	}
	p.tokens[id] = token
}

func (p *publications) drop(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tokens, id)
}
