package main

import (
	"strings"
	"testing"
)

// TestTrainRejectsMeaninglessFlags checks that zero or negative values are
// an error naming the flag, before any data is loaded (a zero used to mean
// "the default" silently).
func TestTrainRejectsMeaninglessFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--epochs", "0"}, "--epochs must be at least 1, got 0"},
		{[]string{"--epochs", "-2"}, "--epochs must be at least 1, got -2"},
		{[]string{"--batch-size", "0"}, "--batch-size must be at least 1, got 0"},
		{[]string{"--train-limit", "-5"}, "--train-limit must not be negative, got -5"},
		{[]string{"--max-steps", "-1"}, "--max-steps must not be negative, got -1"},
		{[]string{"--lr", "-0.1"}, "--lr must not be negative, got -0.1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runCmd(t, append([]string{"train", "mnist", "--data", t.TempDir()}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
