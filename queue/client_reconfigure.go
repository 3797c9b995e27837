package queue

// clientLive is the part of a ClientConfig that Reconfigure swaps.
type clientLive struct {
	adm  *admission
	prio PriorityConfig
}

// Reconfigure replaces the client's Admission and Priority while it runs,
// such as after a configuration file changed: calls already past their
// admission finish under the old settings, later ones use the new. The
// depth figures cached for Admission.MaxDepth are read again. MaxPayload
// stays as the client was made.
func (c *Client) Reconfigure(cfg ClientConfig) {
	c.live.Store(&clientLive{adm: newAdmission(cfg.Admission), prio: cfg.Priority})
}

// current returns the admission and priority settings in force.
func (c *Client) current() (*admission, PriorityConfig) {
	if l := c.live.Load(); l != nil {
		return l.adm, l.prio
	}
	return c.adm, c.cfg.Priority
}
