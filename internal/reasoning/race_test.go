//go:build race

package reasoning

// raceDetector: the race detector allocates on its own, so allocation counts differ.
const raceDetector = true
