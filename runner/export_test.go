package runner

// TelemetryHook is what Run does for telemetry before it runs the tool when
// nothing records: it asks for the tracer. Benchmarks time it alone.
func TelemetryHook(r *Runner) bool { return r.tracer() != nil }
