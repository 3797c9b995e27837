package queue

import "github.com/sluicehq/sluice/queue/queuetype"

// MaxTraceLen bounds JobSpec.Trace: a traceparent (55 bytes), a space and
// a tracestate of at most 512 bytes.
const MaxTraceLen = 55 + 1 + 512

// validateExtras checks the fields of a JobSpec that ride along with a
// job rather than steer it: its webhook and its trace context.
func validateExtras(s JobSpec) error {
	if s.Webhook != nil {
		if err := s.Webhook.Validate("JobSpec"); err != nil {
			return err
		}
	}
	return validTrace(s.Trace)
}

// validTrace checks the form of a stored trace context: printable ASCII
// within MaxTraceLen. Its meaning is the tracer's to read; a context it
// cannot parse starts a new trace.
func validTrace(t string) error {
	if len(t) > MaxTraceLen {
		return queuetype.InvalidArgument(Field("JobSpec", "Trace"), "must be at most %d bytes, got %d", MaxTraceLen, len(t))
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c < 0x20 || c > 0x7e {
			return queuetype.InvalidArgument(Field("JobSpec", "Trace"), "must be printable ASCII (a W3C traceparent and tracestate)")
		}
	}
	return nil
}
