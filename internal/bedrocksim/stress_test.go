package bedrocksim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
)

// TestStreamStress runs thousands of ConverseStream calls through the generated SDK client
// against the simulator, which answers within microseconds: the setting in which the SDK's
// default HTTP client loses some streams to "use of closed network connection" (docs/BEDROCK.md
// B; about 1 in 8,000 here, more on other machines). With NewSDKHTTPClient none may fail.
func TestStreamStress(t *testing.T) {
	const (
		calls       = 3000
		concurrency = 8
	)
	_, url := startSim(t, New(Options{}))
	tc := toolConfig(tool("get_weather", weatherSchema))
	var (
		next     atomic.Int64
		failures atomic.Int64
		firstErr sync.Once
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		client := newClient(t, url) // one per worker: see newClient
		go func() {
			defer wg.Done()
			for next.Add(1) <= calls {
				if err := oneStream(t, client, tc); err != nil {
					failures.Add(1)
					firstErr.Do(func() { t.Errorf("first failure: %v", err) })
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d streams in %v", calls, time.Since(start))
	assert.Zero(t, failures.Load(), "failed streams")
}

func oneStream(t testing.TB, client *bedrockruntime.Client, tc *types.ToolConfiguration) error {
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId:    aws.String(claude),
		Messages:   []types.Message{userText("What is the weather? Use get_weather.")},
		ToolConfig: tc,
	})
	if err != nil {
		return err
	}
	s := collect(t, stream)
	if s.err != nil {
		return s.err
	}
	if s.stopReason != types.StopReasonToolUse || len(s.tools) != 1 || s.usage == nil {
		return fmt.Errorf("incomplete stream: %v", s.order)
	}
	return nil
}
