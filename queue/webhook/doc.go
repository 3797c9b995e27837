// Package webhook delivers queue events (job.completed, job.failed,
// job.cancelled, group.completed) to HTTP receivers: signed, retried with
// backoff, logged, and guarded against server-side request forgery.
//
// # How events travel
//
// A backend with an outbox (queue.Outbox, such as sqlitequeue or
// redisqueue opened with Options.Outbox) writes each event in the same
// atomic step as the job transition it reports, so a finished job always has its event and
// completing a job never waits for a receiver. A Dispatcher claims due
// events from the outbox (a claim hides an event from other dispatchers
// until it expires), POSTs each to the subscriptions that want it, records
// every attempt in the delivery log and acknowledges the event once every
// subscription is done with it. A failed attempt is retried later, from
// the outbox, with exponential backoff and jitter; a dispatcher that
// crashes loses nothing, because its claims expire and another dispatcher
// picks the events up. Delivery is therefore at least once: receivers must
// deduplicate by the delivery id (Idempotency-Key), which is one per event
// and subscription.
//
// # The request
//
// Each delivery is a POST with a JSON body (queue.Event) and these headers:
//
//	Content-Type:            application/json
//	Sluice-Event-Id:         evt_5f0c…   (the event: the same for every subscription)
//	Sluice-Delivery-Id:      evt_5f0c…:billing   (also Idempotency-Key: the event for this
//	                         subscription, the same on every attempt; see DeliveryID)
//	Sluice-Event-Type:       job.completed
//	Sluice-Delivery-Attempt: 1
//	Sluice-Signature:        t=1767225600,v1=5d41402abc4b2a76b9719d911017c592…
//
// A 2xx answer is success. 410 Gone stops delivery of that event to that
// subscription for good and disables the subscription in this dispatcher
// (see Config.OnGone). Any other status, a timeout or a connection error is
// a failed attempt, retried until Config.MaxAttempts. Redirects are not
// followed (a 3xx is a failed attempt): point the subscription at the final
// URL, so that a redirect cannot lead the request somewhere the guard
// would refuse.
//
// # Verifying a delivery
//
// The signature is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
// keyed with the subscription's secret. A receiver recomputes the HMAC over
// the raw body exactly as received, compares it in constant time, and
// rejects a timestamp outside its tolerance (five minutes by default), so a
// captured request cannot be replayed later; within the tolerance, it
// rejects an event id it has already processed. Verify does all but the
// last step. The timestamp is the time of the attempt, so a retry a day
// later still verifies.
//
// # The SSRF guard
//
// Receiver URLs come from configuration that may be less trusted than the
// network the dispatcher runs in. Every connection is checked on the
// address actually dialled (net.Dialer.Control, after DNS resolution), so a
// name that resolves, or later re-resolves, to an internal address cannot
// get past it. Refused unless allowed: loopback, private (RFC 1918, IPv6
// ULA), link-local, CGNAT, multicast, unspecified and reserved addresses,
// and cloud metadata endpoints (169.254.169.254, fd00:ec2::254). Allow an
// internal receiver with Guard.Allow; proxies from the environment are not
// used, since they would dial on the guard's behalf.
//
// # Webhooks given with jobs and groups
//
// With Config.Jobs, a dispatcher also delivers the webhooks callers give
// with their jobs and groups (queue.JobSpec.Webhook, queue.GroupSpec.
// Webhook): for each event it reads the event's job (and group), and
// sends the webhooks that want the event a HookPayload (the event, the
// job's result up to JobHooks.MaxResult, the caller's metadata), signed
// with the tenant's secret (queue.TenantSecrets) or JobHooks.Secret. They
// go through the same claims, retries, guard and delivery log as the
// subscriptions, under the names JobHookName and GroupHookName. Check a
// caller's URL before storing it: give the queue.Client that stores the
// jobs Guard.WebhookCheck (queue.ClientConfig.CheckWebhook), which checks
// every job spec and group whatever call brings it; the guard checks the
// address again on every connection.
//
// # Delivery through a job queue
//
// Run sends the events it claims itself. For many events, delivery can
// move onto a job queue instead, such as a RabbitMQ lane (queue/amqpqueue)
// behind a router (queue/mux), as Firecrawl delivers its webhooks through a
// durable RabbitMQ queue: Forward claims events from the outbox, enqueues
// one delivery job (Kind DeliveryKind) per subscription still waiting for
// each (on the lane, published with confirms) and only then acknowledges
// the event; workers of that queue run Handler, which makes one attempt
// per job with the same signing, guard, host budgets and delivery log
// (RecordDelivery on the outbox, OnDelivery) as Run. A failed attempt is
// retried by the queue after Backoff; the last attempt, a 410 or a refused
// address ends the job. Delivery stays at least once: a crash between the
// enqueue and the acknowledgement forwards an event twice.
package webhook
