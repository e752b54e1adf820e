package serve

// The engine tests load models onto the cpu device. Package serve does not
// import a backend (compile no longer pulls one in); importing the root
// package registers the built-in devices, as a program using serve does.
import _ "github.com/gotpu/gotpu"
