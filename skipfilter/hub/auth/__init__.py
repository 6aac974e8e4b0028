"""Who may do what: tokens found, verified and read (``verify``), and keys fetched from a JWK
Set (``jwks``). Above the ground files (settings, keys, update); below everything that serves."""
