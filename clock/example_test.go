package clock_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// A fake clock moves only when the test says so: a timer fires once the
// clock is advanced past its deadline, without the test sleeping.
func ExampleFake() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)

	t := c.NewTimer(time.Minute)
	c.Advance(30 * time.Second)
	select {
	case <-t.C():
		fmt.Println("fired too early")
	default:
		fmt.Println("not yet at", c.Now().Format(time.TimeOnly))
	}

	c.Advance(30 * time.Second)
	fmt.Println("fired at", (<-t.C()).Format(time.TimeOnly))
	// Output:
	// not yet at 12:00:30
	// fired at 12:01:00
}

// Components take a Clock in their options and read the system clock when
// it is nil.
func ExampleOr() {
	var configured clock.Clock // an Options.Clock left at its zero value
	fmt.Println(clock.Or(configured) == clock.Real)
	// Output: true
}
