// Package lockorder holds the proofs that lockstep's statements follow one
// lock order: deterministic interleavings of every pair of writers that can
// touch the same rows (each with the plan it depends on asserted first),
// and negative controls that show the same harness seeing error 1213 when
// the unsafe statements of the claim/cancel deadlock are put back. It has no API; its
// tests are the point (go test ./lab/lockorder).
package lockorder
