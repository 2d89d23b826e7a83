"""`fusesim calibrate`: microbenchmarks that measure a Hopper GPU and a writer for the calibrated YAML.

`runner` (standard library only) builds cuda/calib.cu and runs it on a GPU machine into a raw JSON;
`derive` (standard library only) turns the raw JSON into Hardware field values with how each was
measured; `writer` merges them into a base hardware YAML and validates the result. Nothing here is
imported when the CLI starts except through fusesim.commands.calibrate, which imports lazily.
"""
