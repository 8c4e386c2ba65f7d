package bedrocksim

import (
	"testing"

	"go.uber.org/goleak"
)

// The simulator, httptest servers and the SDK's event-stream readers all start goroutines;
// every test must leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
