"""Evolution strategies (CMA-ES, ARS) searching a policy's parameters, and the policies they play."""
