"""Entity resolution: decide when a newly extracted entity is an existing node of the tenant."""
