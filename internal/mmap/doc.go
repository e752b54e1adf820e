// Package mmap maps whole files read-only for the model-file readers
// (hf/safetensors, gguf): on Linux with mmap(2), elsewhere not at all (the
// readers then read with ReadAt).
package mmap
