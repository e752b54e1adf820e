package tensor

// Most of the typed API (the methods and functions that are one call of
// Apply on one op) is generated from the op table into the *_gen.go files,
// with the doc comments taken from each op's Def.Doc. Edit the op's
// declaration (package op) or the generator's table
// (internal/gen/opapi/specs.go), then run go generate ./tensor; a test in
// internal/gen/opapi fails while the generated files are not current.

//go:generate go run ../internal/gen/opapi -root ..
