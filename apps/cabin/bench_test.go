package cabin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/intent"
)

// benchTexts are one of each kind of turn: single commands, a slot-less
// navigation, a rejection, small talk, a query and two-step workflows.
var benchTexts = []string{"打开车窗", "把空调调到22度", "帮我导航去虹桥机场", "今天股市怎么样", "打开车窗然后播放音乐",
	"座椅太冷了", "查订单A123", "你好", "声音大一点", "查订单B456，如果没发货就取消"}

// benchTurns runs turn(i) once per op and reports the 50th and 99th
// percentile of the time one took.
func benchTurns(b *testing.B, turn func(i int) error) {
	b.Helper()
	var times []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := turn(i); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		i++
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

// chatTurn is turn i of a benchmark: text i on one of 20 sessions.
func benchRequest(i int) ChatRequest {
	return ChatRequest{SessionID: fmt.Sprint("bench-", i%20), Text: benchTexts[i%len(benchTexts)]}
}

// BenchmarkUnderstand is the intent engine alone on the default
// configuration: dialog act, stop, social, rewrite, route and clauses.
func BenchmarkUnderstand(b *testing.B) {
	app, err := New(context.Background(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	benchTurns(b, func(i int) error {
		_, err := app.engine.Understand(ctx, intent.Turn{Text: benchTexts[i%len(benchTexts)]})
		return err
	})
}

// BenchmarkTurn is a whole cabin turn on the default configuration, in
// memory: understand, plan, run the plugins, reply, checkpoint.
func BenchmarkTurn(b *testing.B) {
	app, err := New(context.Background(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	benchTurns(b, func(i int) error {
		_, err := app.Chat(ctx, benchRequest(i))
		return err
	})
}

// BenchmarkTurnSQLite is the same turn with the sessions, the vehicle and
// the orders in a SQLite file.
func BenchmarkTurnSQLite(b *testing.B) {
	app := newApp(b, Options{})
	ctx := context.Background()
	benchTurns(b, func(i int) error {
		_, err := app.Chat(ctx, benchRequest(i))
		return err
	})
}

// BenchmarkChatHTTP is POST /api/v1/agent/chat over loopback HTTP, with
// the sessions in memory, in a SQLite file, and as `loom serve` runs it:
// mounted in Loom's server on its SQLite file, each session a thread of
// the server's.
func BenchmarkChatHTTP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		serve func(b *testing.B) string // the base URL
	}{
		{"memory", func(b *testing.B) string {
			app, err := New(context.Background(), Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(Routes(app, nil))
			b.Cleanup(srv.Close)
			return srv.URL
		}},
		{"sqlite", func(b *testing.B) string {
			srv := httptest.NewServer(Routes(newApp(b, Options{}), nil))
			b.Cleanup(srv.Close)
			return srv.URL
		}},
		{"loom-serve", func(b *testing.B) string { return serveLoom(b).url }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			url := bc.serve(b)
			client := &http.Client{}
			benchTurns(b, func(i int) error {
				body, _ := json.Marshal(benchRequest(i))
				resp, err := client.Post(url+"/api/v1/agent/chat", "application/json", bytes.NewReader(body))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("HTTP %d", resp.StatusCode)
				}
				return nil
			})
		})
	}
}
