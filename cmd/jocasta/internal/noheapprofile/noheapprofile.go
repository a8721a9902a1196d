package noheapprofile

import "runtime"

func init() { runtime.MemProfileRate = 0 }
