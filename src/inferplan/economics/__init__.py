"""The Users + ROI simulator: workloads → users → loadouts → cost, payback and API comparison."""
