//go:build race

package lockstep_test

// raceEnabled: the race detector slows every statement's Go code (and the
// whole of the pure-Go SQLite) several times over; the load tests that size
// themselves by it run smaller under it. `make test` runs them again at full
// size without it.
const raceEnabled = true
