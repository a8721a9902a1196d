package traffic_test

import "os"

func testingCI() bool { return os.Getenv("CI") != "" }
