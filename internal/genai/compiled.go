//go:build !toolreg_notelemetry

package genai

// Compiled is false in a build with the tag toolreg_notelemetry, which
// compiles every span and metric hook out of runner and effector. It exists
// as the baseline the telemetry benchmarks measure the hooks' cost against
// (issue 21: under 2% of Runner.Run and Effector.Process with nothing
// collecting); a service has no need of it, since with no provider set the
// hooks cost one comparison each.
const Compiled = true
