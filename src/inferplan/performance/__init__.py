"""Speed: prefill and decode phase times, the serving curve and the throughput–interactivity frontier."""
