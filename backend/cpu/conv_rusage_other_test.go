//go:build !unix

package cpu

import "time"

// convCPUTime is unavailable here (see the unix version).
func convCPUTime() time.Duration { return 0 }
