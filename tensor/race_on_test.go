//go:build race

package tensor_test

// raceEnabled reports a -race build (sync.Pool drops items at random
// there, so allocation counts are not meaningful).
const raceEnabled = true
