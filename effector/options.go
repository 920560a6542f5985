package effector

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
)

// Defaults of the options below.
const (
	// DefaultTimeout bounds one execution of a tool function.
	DefaultTimeout = 30 * time.Second
	// DefaultLease is how long a claim keeps other workers off an intent. It
	// must exceed every tool's timeout plus the store timeout plus
	// LeaseMargin, so that the effector records the outcome (ERROR on
	// timeout) before anyone else may claim the intent.
	DefaultLease = 2 * time.Minute
	// LeaseMargin is what New demands a lease hold beyond the longest tool
	// timeout plus the store timeout: the time between the store starting
	// the lease and the tool starting (the claim's reply, argument checks),
	// and the watchdog's scheduling. A store timeout of 0 (none) counts as
	// 0: give durable stores a WithStoreTimeout so the sum means something.
	LeaseMargin = 100 * time.Millisecond
	// DefaultResultTTL is how long a terminal result is kept in the store.
	// A redelivered intent is answered from the store within it, so keep it
	// longer than intents live (Activation's default time-to-live is 1h).
	DefaultResultTTL = 24 * time.Hour
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait between claims of
	// an intent another worker holds.
	DefaultMinBackoff = 5 * time.Millisecond
	DefaultMaxBackoff = time.Second
)

// VerifyMode says how the effector treats intent signatures.
type VerifyMode int

const (
	// VerifyOff ignores signatures: every intent is processed. Use it only
	// where the intent channel is trusted end to end.
	VerifyOff VerifyMode = iota
	// VerifyPermissive processes unsigned intents but refuses a signed intent
	// whose signature does not verify or whose key is unknown. It is the mode
	// for rolling signing out: a bad signature is always tampering or a
	// misconfiguration, never something to execute.
	VerifyPermissive
	// VerifyRequire refuses unsigned intents too.
	VerifyRequire
)

func (m VerifyMode) String() string {
	switch m {
	case VerifyOff:
		return "off"
	case VerifyPermissive:
		return "permissive"
	case VerifyRequire:
		return "require"
	}
	return "VerifyMode(" + strconv.Itoa(int(m)) + ")"
}

// DeadLetterFunc receives an intent refused before it reached the store
// (its signature did not verify, or it is malformed), with the reason. No
// Result exists for such an intent. It also receives a poison intent, given
// up after WithMaxAttempts attempts, with a *PoisonError: that one has an
// ERROR result. An error from it is reported by Process in
// RefusedError.SinkErr, so the caller can keep the intent rather than drop it.
type DeadLetterFunc func(ctx context.Context, in *intent.Intent, reason error) error

// ApprovalFunc receives an intent of kind APPROVAL: a request for a human to
// decide. The effector calls it at most once per intent id (under the
// intent's claim) and never executes anything for it. An error releases the
// claim, so a redelivery asks again.
type ApprovalFunc func(ctx context.Context, in *intent.Intent) error

// Option configures an Effector.
type Option func(*config)

type config struct {
	now          func() time.Time
	lease        time.Duration
	timeout      time.Duration
	toolTimeouts map[string]time.Duration
	resultTTL    time.Duration
	minBackoff   time.Duration
	maxBackoff   time.Duration
	storeTimeout time.Duration
	mode         VerifyMode
	keys         map[string][]byte
	deadLetter   DeadLetterFunc
	approval     ApprovalFunc
	logger       *slog.Logger
	maxAttempts  int
	underivedIDs bool
	maxArgs      int
	toolMaxArgs  map[string]int
	dropUnknown  map[string]bool // tools whose unknown argument keys are dropped
	skipResults  bool            // WithoutResultValidation

	tracerProvider trace.TracerProvider // telemetry.go
	meterProvider  metric.MeterProvider
	recordArgs     bool
}

func defaultConfig() config {
	return config{
		now:        time.Now,
		lease:      DefaultLease,
		timeout:    DefaultTimeout,
		resultTTL:  DefaultResultTTL,
		minBackoff: DefaultMinBackoff,
		maxBackoff: DefaultMaxBackoff,
		logger:     slog.Default(),
		maxArgs:    toolreg.DefaultMaxArgsBytes,

		maxAttempts: DefaultMaxAttempts,
	}
}

// WithoutResultValidation turns off the check of each result against its
// manifest's returns. UNSAFE: a function whose result drifts from its
// contract then has that result recorded as OK and published to the
// pipeline, which reads it as the manifest describes. Validation is on by
// default: a result that breaks returns is recorded as a terminal ERROR
// saying the effect happened, with each failing path.
func WithoutResultValidation() Option {
	return func(c *config) { c.skipResults = true }
}

// WithClock sets the clock that decides expiry and stamps completed_at_ms.
// The default is time.Now. (Leases and result time-to-lives are measured by
// the store.)
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithLease sets how long a claim holds an intent. The default is
// DefaultLease. New refuses a lease that does not exceed the longest tool
// timeout plus the store timeout plus LeaseMargin.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease = d }
}

// WithTimeout sets the timeout of every tool without its own
// (WithToolTimeout). The default is DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithToolTimeout sets the timeout of the tool called name, overriding
// WithTimeout. New refuses a name the effect table does not hold.
func WithToolTimeout(name string, d time.Duration) Option {
	return func(c *config) {
		if c.toolTimeouts == nil {
			c.toolTimeouts = make(map[string]time.Duration)
		}
		c.toolTimeouts[name] = d
	}
}

// WithResultTTL sets how long the store keeps a terminal result. The default
// is DefaultResultTTL.
func WithResultTTL(d time.Duration) Option {
	return func(c *config) { c.resultTTL = d }
}

// WithBackoff sets the bounds of the wait between claims of an intent another
// worker holds: it starts at min and doubles up to max. The defaults are
// DefaultMinBackoff and DefaultMaxBackoff. The caller's context bounds the
// total wait.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) { c.minBackoff, c.maxBackoff = min, max }
}

// WithStoreTimeout bounds each store call that records the outcome of a
// claim (each attempt of Complete, which is retried until the lease ends;
// Release). Those calls run even after the caller's context has ended, since
// the outcome of a function that ran must be recorded, so this is their only
// bound besides the store's own I/O timeouts. New counts it in the lease
// check (see WithLease). The default, 0, adds none: a durable store's client
// timeouts apply.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) { c.storeTimeout = d }
}

// WithVerify sets the signature mode and the HMAC-SHA256 keys by key id. The
// default is VerifyOff with no keys. New refuses VerifyPermissive or
// VerifyRequire with no keys, and an empty key. The map is copied.
func WithVerify(mode VerifyMode, keys map[string][]byte) Option {
	return func(c *config) {
		c.mode = mode
		c.keys = make(map[string][]byte, len(keys))
		for id, k := range keys {
			c.keys[id] = append([]byte(nil), k...)
		}
	}
}

// WithDeadLetter sets where refused intents go. The default logs each one at
// level Warn (intent id, tool, reason; never its arguments) and drops it.
func WithDeadLetter(f DeadLetterFunc) Option {
	return func(c *config) { c.deadLetter = f }
}

// WithApproval sets where intents of kind APPROVAL go. With none (the
// default), such an intent is completed as REJECTED, saying so.
func WithApproval(f ApprovalFunc) Option {
	return func(c *config) { c.approval = f }
}

// WithLogger sets the logger. The default is slog.Default(). The effector logs
// intent ids, tool names, statuses and errors; never arguments or payloads,
// which may hold personal data.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithUnderivedIDs accepts intents whose id is not
// intent.IntentID(EntityKey, Seq, StepIndex): a producer with an id scheme of
// its own, which must then give each step exactly one id. The default
// refuses them (*IntentIDError): an id that does not follow from the step
// could run one step twice under two ids.
func WithUnderivedIDs() Option {
	return func(c *config) { c.underivedIDs = true }
}

// WithMaxArgsBytes sets the largest arguments, in bytes of JSON, of an intent
// for a tool without its own limit (WithToolMaxArgsBytes). Larger ones are
// REJECTED with a *toolreg.ArgumentsTooLargeError's message before they are
// decoded, and the function never runs. The default is
// toolreg.DefaultMaxArgsBytes (1 MiB); New refuses n <= 0.
func WithMaxArgsBytes(n int) Option {
	return func(c *config) { c.maxArgs = n }
}

// WithToolMaxArgsBytes sets the argument size limit of the tool called name,
// overriding WithMaxArgsBytes. New refuses a name the effect table does not
// hold, and n <= 0.
func WithToolMaxArgsBytes(name string, n int) Option {
	return func(c *config) {
		if c.toolMaxArgs == nil {
			c.toolMaxArgs = make(map[string]int)
		}
		c.toolMaxArgs[name] = n
	}
}

// WithDropUnknownKeys makes the effector drop, for each tool named, the
// argument keys its manifest does not declare (at any depth, except in maps
// declared with additionalProperties) before validating, and log each dropped
// key's JSON Pointer at level Info with the intent id and tool (never the
// values). It is for intents staged by Python producers: pydantic ignores
// extra keys, so its pipelines may stage them. By default, and for every tool
// not named, an unknown key is refused (REJECTED), as on every other path.
// Dropping keys changes nothing else: the rest is validated as usual. New
// refuses a name the effect table does not hold.
func WithDropUnknownKeys(tools ...string) Option {
	return func(c *config) {
		if c.dropUnknown == nil {
			c.dropUnknown = make(map[string]bool)
		}
		for _, t := range tools {
			c.dropUnknown[t] = true
		}
	}
}
