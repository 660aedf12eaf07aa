package workflows

import "time"

// PoolAsleep exposes PoolInput.asleep to the external tests.
func PoolAsleep(in PoolInput, awake, now time.Time) bool { return in.withDefaults().asleep(awake, now) }
