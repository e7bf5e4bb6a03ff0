// Package corpusgen holds only a test: it reproduces, on live MariaDB and
// Oracle MySQL servers, one deadlock per pattern the decoder names and per
// key type it must decode with a schema, and checks each report against
// the hand-written sidecar committed beside it in
// ../testdata/corpus/generated. Run with -update to rewrite the reports
// (NAME.txt) and their schemas (NAME.schema.sql); the sidecars
// (NAME.facts.json) are written by hand, after reading each report.
//
//	go test ./lockdiag/deadlock/corpusgen -count=1
//	go test ./lockdiag/deadlock/corpusgen -count=1 -update
package corpusgen
