package mcpclient

// OnCall makes p call f just before it sends each tool call.
func (p *Pool) OnCall(f func(server, tool string)) { p.beforeCall = f }
