defmodule EchoMQ.InvalidInput do
  @moduledoc """
  Refused by this host before anything was sent: a bad queue name, a
  payload over its limit, an option out of its range (PROTOCOL.md §1, §7's
  limits). It never borrows a server code: the server's refusals come back
  as `{:error, _}` tuples, never raised.
  """
  defexception [:message]
end
