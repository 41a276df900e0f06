"""Tools in the API: the catalogue, which tools a message would get, and the calls a turn makes."""
