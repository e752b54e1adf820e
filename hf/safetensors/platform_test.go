package safetensors

import "runtime"

const isLinux = runtime.GOOS == "linux"
