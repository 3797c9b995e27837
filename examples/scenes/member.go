package main

import "github.com/sluicehq/sluice/ratelimit"

// MemberPolicy names one action a team member may take. Typed names keep a
// misspelt policy from compiling, and memberLimits is the only place a
// policy gets its limit.
type MemberPolicy string

// The member scene's policies.
const (
	GetLLMRequestRecord    MemberPolicy = "get-llm-request-record"
	ChatAgentHelper        MemberPolicy = "chat-agent-helper-completions"
	Transcriptions         MemberPolicy = "transcriptions"
	RedeemCoupon           MemberPolicy = "redeem-coupon"
	RefundBill             MemberPolicy = "refund-bill"
	CreateBill             MemberPolicy = "create-bill"
	ExportMembers          MemberPolicy = "export-members"
	CheckPayResult         MemberPolicy = "check-pay-result"
	ExportUsage            MemberPolicy = "export-usage"
	ExportDataset          MemberPolicy = "export-dataset"
	DownloadDatasetArchive MemberPolicy = "download-dataset-archive"
	ExportChatLogs         MemberPolicy = "export-chat-logs"
)

// memberLimits is the member scene's policy table: one limit per policy.
var memberLimits = map[MemberPolicy]ratelimit.Limit{
	GetLLMRequestRecord:    ratelimit.PerSecond(1),
	ChatAgentHelper:        ratelimit.PerMinute(10),
	Transcriptions:         ratelimit.PerSecond(1),
	RedeemCoupon:           ratelimit.PerSecond(1),
	RefundBill:             ratelimit.PerSecond(1),
	CreateBill:             ratelimit.PerSecond(1),
	ExportMembers:          ratelimit.PerMinute(1),
	CheckPayResult:         ratelimit.PerMinute(60),
	ExportUsage:            ratelimit.PerMinute(1),
	ExportDataset:          ratelimit.PerMinute(1),
	DownloadDatasetArchive: ratelimit.PerMinute(1),
	ExportChatLogs:         ratelimit.PerMinute(1),
}

// MemberAction is one call in the member scene: who does what.
type MemberAction struct {
	Policy MemberPolicy
	Member string // the team member's id
}

// memberScene counts each member's actions per policy. It fails open: an
// outage of the limiter must not stop members from working.
func memberScene() ratelimit.Definition[MemberAction] {
	return ratelimit.Definition[MemberAction]{
		Scene:   "member",
		Policy:  func(a MemberAction) string { return string(a.Policy) },
		Subject: func(a MemberAction) []string { return []string{"member", a.Member} },
		Limits: func(a MemberAction) []ratelimit.Limit {
			l, ok := memberLimits[a.Policy]
			if !ok {
				return nil // Allow reports an unknown policy as an invalid argument
			}
			return []ratelimit.Limit{l}
		},
	}
}
