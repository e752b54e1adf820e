//go:build !pjrt

package main

// pjrtBuild reports whether the tests run in a -tags pjrt build.
const pjrtBuild = false
