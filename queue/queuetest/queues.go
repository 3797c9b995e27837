package queuetest

// The queues the suite's tests use besides those of one feature's tests
// (groups, tenants). Their names mean nothing: a test uses several so that
// work on one must not touch another, and so that one call spans two. A
// backend's test that places some of them elsewhere, such as a router
// sending part of them to a second backend (queue/mux), names them by these
// constants, so it keeps up with the suite.
const (
	// QueueQ is the queue most tests use.
	QueueQ = "q"
	// QueueMail holds the job with every field set (Enqueue), and shares
	// a batch with QueueOther.
	QueueMail = "mail"
	// QueueOther is a queue beside QueueMail and others, which tests
	// check it keeps apart from them.
	QueueOther = "other"
	// QueueA and QueueB split the jobs of listing and stats tests.
	QueueA = "a"
	QueueB = "b"
	// QueueC, QueueD, QueueP, QueueR, QueueS and QueueW each hold one
	// test's jobs or one state's (Concurrency runs on QueueC).
	QueueC = "c"
	QueueD = "d"
	QueueP = "p"
	QueueR = "r"
	QueueS = "s"
	QueueW = "w"
	// QueueX, QueueY and QueueZ: a lease over QueueX and QueueZ must
	// leave QueueY's job (PriorityFIFO).
	QueueX = "x"
	QueueY = "y"
	QueueZ = "z"
)
