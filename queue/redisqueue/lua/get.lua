-- get: read one job. KEYS: job, errors. Returns {fields, errors}.
return read(KEYS[1], KEYS[2])
