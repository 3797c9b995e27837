//go:build !race

package queuetest

const raceEnabled = false
