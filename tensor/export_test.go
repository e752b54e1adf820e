package tensor

// SetForceDecompose makes composite ops ignore direct kernels (tests only).
func SetForceDecompose(on bool) bool { return forceDecompose.Swap(on) }
