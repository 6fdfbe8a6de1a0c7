from minisgl.scheduler.scheduler import ForwardInput, Scheduler

__all__ = ["ForwardInput", "Scheduler"]
