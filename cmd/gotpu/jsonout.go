package main

import (
	"encoding/json"
	"io"
)

// writeJSON writes v to w as indented JSON (two spaces), the form of every
// command's --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
