package redisqueue_test

const crashHelperEnv = "SLUICE_REDISQUEUE_CRASH_HELPER"

func crashHelperMain() int { return 0 }
