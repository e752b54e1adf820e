//go:build amd64 && !purego && !linux

package cpulevel

// amxGranted is false where gotpu does not know how to ask the OS for the
// AMX tile state.
const amxGranted = false
