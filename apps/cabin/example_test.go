package cabin_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/apps/cabin"
)

// A conditional request asks before it cancels; the next turn answers.
func Example() {
	ctx := context.Background()
	app, err := cabin.New(ctx, cabin.Options{}) // default zh-CN set, in memory
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{"查订单A123，如果没发货就取消", "确认", "打开车窗然后把空调调到20度"} {
		r, err := app.Chat(ctx, cabin.ChatRequest{SessionID: "driver-1", Text: text})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s → %s: %s\n", text, r.Type, r.Message)
	}
	// Output:
	// 查订单A123，如果没发货就取消 → ask_confirmation: 订单 A123（蓝牙耳机）当前状态：待发货。确认要取消订单 A123 吗？
	// 确认 → workflow_result: 订单 A123 已取消，199 元将原路退回。
	// 打开车窗然后把空调调到20度 → workflow_result: 好，车窗已经打开了，空调也调到 20 度了。
}
