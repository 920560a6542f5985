package effector

import (
	"context"

	"github.com/beam-agents/toolreg/intent"
)

// TelemetryHooks runs every telemetry hook of one Process of a fresh intent
// that succeeds (the span, the four phases, the metric checks), without the
// work between them. Benchmarks time them alone.
func TelemetryHooks(ctx context.Context, e *Effector, in *intent.Intent) {
	ctx, span := e.tel.start(ctx, in)
	_, s := phaseUnder(ctx, span, phaseVerify)
	endPhase(s, nil)
	_, s = phaseUnder(ctx, span, phaseClaim)
	endPhase(s, nil)
	xctx, x := e.startExecute(ctx, in)
	e.endExecute(xctx, x, in, nil)
	_, s = e.tel.phase(ctx, phaseComplete)
	endPhase(s, nil)
	e.tel.end(ctx, span, in, intent.Result{Status: intent.StatusOK}, nil)
}
