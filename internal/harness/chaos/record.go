package chaos

// Record is one line of a worker's output file: exactly one field is set.
type Record struct {
	Section *Section `json:"section,omitempty"`
	// Entered is a partition group's section as its fn started, with no
	// writes yet: its Section record follows when fn returns, unless the
	// process is killed first, and the checker must know what a killed
	// member ran.
	Entered  *Section  `json:"entered,omitempty"`
	Wait     *Wait     `json:"wait,omitempty"`
	Observed *Observed `json:"observed,omitempty"`
	Summary  *Summary  `json:"summary,omitempty"`
}

// Section is one acquisition and the critical section it guarded. A
// partition group's section is one fn of one partition, under the
// partition's lease: it accesses the resource again and again.
type Section struct {
	// Holder names the worker goroutine: PROCESS/gN.
	Holder string `json:"holder"`
	// ID names this section, HOLDER#N: the resource logs its writes under
	// it. Tokens alone do not tell sections apart once a server restarted
	// empty hands the same token out again.
	ID string `json:"id"`
	// Partition is, for a partition group's section (KindPartition), the
	// partition whose fn it is: each partition has a fenced resource of
	// its own, on its lock's name (NAME:P).
	Partition int `json:"partition,omitempty"`
	// Owner is the lease's owner field in Redis.
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	// Enter is read just after Acquire returned; Exit just before Release.
	Enter Mono `json:"enter"`
	Exit  Mono `json:"exit"`
	// Lost is when the lease's context was cancelled because the lease was
	// lost (0: it was not): from then on the holder must not act.
	Lost    Mono   `json:"lost,omitempty"`
	LostErr string `json:"lost_err,omitempty"`
	// Deadline is the lease's local deadline when the section ended: the
	// last confirmed renewal (or the acquisition) plus the lease, less the
	// drift margin (lease.Lease.Deadline); 0 when it had none.
	Deadline Mono `json:"deadline,omitempty"`
	// Writes are the section's writes to the fenced resource, in order.
	Writes []Write `json:"writes"`
	// Skipped counts writes the holder did not make because its lease was
	// no longer valid.
	Skipped int `json:"skipped,omitempty"`
	// ReleaseErr is Release's error, if any.
	ReleaseErr string `json:"release_err,omitempty"`
	// Goroutines is how many goroutines the worker process ran at Enter.
	Goroutines int `json:"goroutines,omitempty"`
}

// End is when the holder stopped acting: its exit, or the loss of its lease
// if that came first (an obedient holder acts no more once it is lost).
func (s *Section) End() Mono {
	if s.Lost != 0 && s.Lost < s.Exit {
		return s.Lost
	}
	return s.Exit
}

// Write is one access to the fenced resource, a read or a write: each
// carries the section's token, and each the resource takes raises its fence.
type Write struct {
	Phase string `json:"phase"` // "enter" (a read) or "exit" (a write)
	// Issued is read before the holder checked its lease and sent the
	// write; Done when the reply came.
	Issued   Mono `json:"issued"`
	Done     Mono `json:"done"`
	Accepted bool `json:"accepted"`
	// Value is the number read (enter) or written (exit), when taken.
	Value int64  `json:"value,omitempty"`
	Err   string `json:"err,omitempty"`
}

// Wait is one Acquire (or TryAcquire) call: when it started, its ctx
// deadline, when it returned.
type Wait struct {
	Holder   string `json:"holder"`
	Start    Mono   `json:"start"`
	Deadline Mono   `json:"deadline"`
	Returned Mono   `json:"returned"`
	Acquired bool   `json:"acquired"`
	Err      string `json:"err,omitempty"`
	// Try: the call was TryAcquire.
	Try bool `json:"try,omitempty"`
}

// Observed is one report an election's observer received from Observe.
type Observed struct {
	// Observer names the observing goroutine: PROCESS/oN. Each has its own
	// Observe channel, whose reports must never go back a term.
	Observer string `json:"observer"`
	// At is read when the report was received.
	At Mono `json:"at"`
	// Token, Owner and Value are the report's (election.Leader): Owner
	// empty when nobody leads, Token then the term that ended.
	Token uint64 `json:"token"`
	Owner string `json:"owner,omitempty"`
	Value string `json:"value,omitempty"`
}

// Summary is a worker's last line, written once it has closed its Clients.
type Summary struct {
	Process string `json:"process"`
	// Leaked is the number of goroutines left running after Close.
	Leaked   int    `json:"leaked"`
	LeakInfo string `json:"leak_info,omitempty"`
}
