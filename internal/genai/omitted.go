//go:build toolreg_notelemetry

package genai

// Compiled: see compiled.go.
const Compiled = false
