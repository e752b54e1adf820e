package constrain_test

import (
	"github.com/gotpu/gotpu/serve"
	"github.com/gotpu/gotpu/serve/constrain"
)

// A *Constraint is a serve.Constraint. This is an external test so that
// serve may import constrain without a test import cycle.
var _ serve.Constraint = (*constrain.Constraint)(nil)
