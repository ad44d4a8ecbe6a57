"""What a person sees of a game: the table view, frames and clips, why an action is refused.
Imports the game and util."""
