// Package version holds the gotpu version in a package with no
// dependencies, so that packages which put it into compile-cache keys
// (compile) need not import the root package and, through it, every
// built-in backend. The root package re-exports it as gotpu.Version.
package version

// Version is the gotpu version; it is part of compile-cache keys.
const Version = "0.1.0-dev"
