package evalgen

import "strings"

// noiseParagraph is the default haystack: one bland paragraph repeated, as
// RULER's "noise" haystack repeats a few plain sentences. None of its words
// appears in a key, a value, a variable name or a question's own words
// (see TestNoiseSharesNoWords), so only needles answer a question.
const noiseParagraph = "The tide comes in and the tide goes out. Lamps along the pier are lit at dusk. " +
	"Gulls circle above the harbour wall. A ferry crosses the bay twice a day. Here the evenings are long and calm."

// adjectives and nouns make word keys and word values ("adjective-noun").
// 96 × 96 pairs are far more than any sample needs.
var adjectives = strings.Fields(`
	amber ancient brave brisk bumpy cheerful chilly clever cosy crimson crooked curly
	dainty dusty eager early elegant fancy fierce fluffy frosty fuzzy gentle giant
	glossy graceful grumpy hasty hollow humble icy jolly keen lavish lively lucky
	marvelous mellow merry mighty misty modest narrow nimble noble odd orange plain
	polite proud purple quaint quick rapid rare restless rosy rough royal rusty
	sandy scarlet shaggy shiny silent silky slim sly smooth snowy sour sparkling
	spicy steady sticky stormy sturdy subtle sunny swift tangible tender tidy tiny
	violet vivid wary wealthy wild windy witty wooden woolly young zany zealous`)

var nouns = strings.Fields(`
	acorn anchor apple apron badger banjo barrel beacon beetle biscuit blossom bucket
	button cactus camera candle canyon carpet castle cherry chimney cobalt comet cookie
	cricket crystal dolphin dragon drum eagle engine falcon feather fiddle garden garlic
	goblet grape guitar hammer helmet hornet iceberg island jacket jigsaw kettle kitten
	ladder lantern lemon lobster magnet mango marble meadow mitten monkey mushroom
	needle nugget oyster paddle parrot peach pebble pencil pepper piano pillow pirate
	planet pocket pumpkin puzzle quilt rabbit raccoon ribbon rocket saddle salmon
	scooter shovel spider sponge teapot thimble tiger tulip violin walnut whistle zebra`)
