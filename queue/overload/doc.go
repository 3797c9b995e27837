// Package overload watches the machine a process runs on and says when it
// is overloaded, so that workers stop taking new jobs and the queue stops
// admitting them before CPU or memory run out.
//
// A Monitor samples a Source on an interval: the process's cgroup v2 when
// it has one (containers and systemd units: cpu.max, cpu.stat,
// memory.max, memory.current), otherwise the whole host. CPU usage is the
// share of the CPU time available to the cgroup (its cpu.max quota, or
// every CPU) used since the previous sample; memory usage is the working
// set (memory.current less reclaimable inactive file cache) over the
// memory limit (memory.max, or the host's memory).
//
// The monitor is overloaded while either figure is at or above its
// threshold (80 % by default). It stays overloaded until the figure has
// fallen below the threshold by Hysteresis (5 points by default): with
// the defaults it turns overloaded at 80 % and clear again below 75 %, so
// a load hovering around the threshold does not switch workers on and off
// at every sample.
//
// *Monitor implements queue.LoadMonitor: give it to
// queue.WorkerConfig.Monitor and queue.Admission.Monitor.
package overload
