//go:build !race

package lockstep_test

// raceEnabled: see race_test.go.
const raceEnabled = false
